"""Zero-copy hand-offs between memhal and numpy against the copy they avoid, in one run.

Usage: PYTHONPATH=<build>/python /usr/bin/python3 python/bench/interop_bench.py
Prints, per size, microseconds per call and the ratio copy / zero-copy (higher is better).
"""
import timeit

import numpy as np

import memhal


def best_us(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main():
    print(f"{'case':<44}{'size':>10}{'memhal us':>12}{'copy us':>12}{'ratio':>9}")
    for mib in (1, 8, 64):
        n = mib * 1024 * 1024 // 4
        t = memhal.Tensor((n,), "f32", memory="mem")
        a = np.ones(n, dtype=np.float32)
        number = max(20, 2000 // mib)
        cases = [
            ("numpy.from_dlpack(tensor) vs map + copy",
             lambda: np.from_dlpack(t),
             lambda: np.array(np.asarray(t.map("read")))),
            ("numpy.asarray(tensor.map()) vs map + copy",
             lambda: np.asarray(t.map("read")),
             lambda: np.array(np.asarray(t.map("read")))),
            ("Tensor.from_numpy(a) vs from_numpy(copy=True)",
             lambda: memhal.Tensor.from_numpy(a),
             lambda: memhal.Tensor.from_numpy(a, copy=True)),
            ("memhal.from_dlpack(a) vs from_numpy(copy=True)",
             lambda: memhal.from_dlpack(a),
             lambda: memhal.Tensor.from_numpy(a, copy=True)),
        ]
        for name, zero_copy, copy in cases:
            z, c = best_us(zero_copy, number), best_us(copy, max(5, number // 10))
            print(f"{name:<44}{str(mib) + ' MiB':>10}{z:>12.2f}{c:>12.1f}{c / z:>9.0f}x")


if __name__ == "__main__":
    main()
