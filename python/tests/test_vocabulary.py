"""One vocabulary on every surface: the Python enums against the golden file and `memhal info --json`."""
from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

import memhal

GoldenRows = list[tuple[str, int, str, list[str]]]

VOCABULARIES = ["MemoryKind", "DType", "PixelFormat", "Compression", "CpuAccess", "MemoryDomainKind", "Flip",
                "Rotation", "ResizeMode", "Interpolation", "ColorMatrix", "ColorRange", "ImageBackend"]

# The `memhal convert` option that takes each option vocabulary.
CLI_OPTIONS = {"Flip": "--flip", "Rotation": "--rotate", "ResizeMode": "--resize", "Interpolation": "--interp",
               "ColorMatrix": "--matrix", "ColorRange": "--range", "ImageBackend": "--backend"}


def test_every_golden_row_is_an_enum_member_with_that_code_and_wire_string(golden_rows: GoldenRows) -> None:
    for vocabulary, code, wire, aliases in golden_rows:
        enum = getattr(memhal, vocabulary)
        member = getattr(enum, wire.upper())
        assert member.code == code, (vocabulary, wire)
        assert str(member) == wire
        assert enum.from_code(code) == member
        assert enum.from_string(wire) == member
        assert enum.from_string(wire.upper()) == member
        for alias in aliases:
            assert enum.from_string(alias) == member, (vocabulary, alias)
            assert enum.from_string(alias.upper()) == member


def test_every_enum_member_has_a_golden_row(golden_rows: GoldenRows) -> None:
    for vocabulary in VOCABULARIES + ["ErrorCode"]:
        golden = {wire.upper(): code for v, code, wire, _ in golden_rows if v == vocabulary}
        members = {name: member.code for name, member in getattr(memhal, vocabulary).__members__.items()}
        assert members == golden, vocabulary


def test_every_error_code_has_its_own_error_class(golden_rows: GoldenRows) -> None:
    seen: set[int] = set()
    for vocabulary, code, wire, _ in golden_rows:
        if vocabulary != "ErrorCode":
            continue
        assert getattr(memhal.ErrorCode, wire.upper()).code == code
        cls = memhal.UnimplementedError if wire == "not_implemented" else getattr(
            memhal, "".join(part.capitalize() for part in wire.split("_")) + "Error")
        assert issubclass(cls, memhal.Error)
        seen.add(code)
    assert seen == set(range(1, 14))


def test_unknown_codes_and_strings_are_rejected_not_guessed() -> None:
    with pytest.raises(memhal.InvalidArgumentError) as info:
        memhal.MemoryKind.from_code(6)
    assert info.value.code == memhal.ErrorCode.INVALID_ARGUMENT
    assert "6" in info.value.message
    with pytest.raises(ValueError):  # InvalidArgumentError is also a ValueError
        memhal.PixelFormat.from_code(0)
    with pytest.raises(memhal.InvalidArgumentError, match="dmabuf2"):
        memhal.MemoryKind.from_string("dmabuf2")
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tensor((2,), dtype="f128")


def test_vocabulary_arguments_take_members_strings_aliases_and_codes() -> None:
    spellings: tuple[memhal.MemoryKind | str | int, ...] = (memhal.MemoryKind.MEM, "mem", "MEM", 0)
    for spelling in spellings:
        assert memhal.Tensor((1,), "u8", memory=spelling).memory == memhal.MemoryKind.MEM
    assert memhal.Tensor.image(4, 2, "gray", memory="mem").pixel_format == memhal.PixelFormat.GREY


def test_memory_kinds_match_memhal_info_json(memhal_cli: str) -> None:
    out = subprocess.run([memhal_cli, "info", "--json"], check=True, capture_output=True, text=True).stdout
    kinds = json.loads(out)["memory_kinds"]
    assert [k["name"] for k in kinds] == [str(m) for m in memhal.MemoryKind.__members__.values()]
    for entry in kinds:
        member = memhal.MemoryKind.from_string(entry["name"])
        assert member.code == entry["code"]
        answer = memhal.availability(member)
        assert answer.available == entry["available"], entry
        assert answer.reason == entry["reason"], entry


def test_the_enum_constructors_refuse_unknown_codes_as_from_code_does(golden_rows: GoldenRows) -> None:
    for vocabulary in VOCABULARIES + ["ErrorCode"]:
        enum = getattr(memhal, vocabulary)
        codes = {code for v, code, _, _ in golden_rows if v == vocabulary}
        for code in codes:
            member = enum(code)  # a known code still builds its named member
            assert member.code == code and member.name in enum.__members__, (vocabulary, code)
            assert enum(member) == member
        for unknown in (max(codes) + 1, 7 if 7 not in codes else 999, 1 << 40, -1):
            with pytest.raises(memhal.InvalidArgumentError) as info:
                enum(unknown)
            assert isinstance(info.value, ValueError), vocabulary
            assert vocabulary in info.value.message and str(unknown) in info.value.message, info.value.message
        with pytest.raises(memhal.InvalidArgumentError):
            enum(2.5)
    assert memhal.MemoryKind("dmabuf") == memhal.MemoryKind.DMABUF  # as from_string
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.PixelFormat(0)  # 0 is no pixel format


def test_every_vocabulary_of_the_golden_file_is_bound(golden_rows: GoldenRows) -> None:
    assert sorted({v for v, _, _, _ in golden_rows}) == sorted(VOCABULARIES + ["ErrorCode"])


def test_memhal_convert_help_lists_each_option_vocabulary_as_the_golden_file_does(golden_rows: GoldenRows,
                                                                                 memhal_cli: str) -> None:
    """`--flip none|horizontal|vertical|both ... (also: h, v)`: wire strings in code order, then the aliases."""
    text = subprocess.run([memhal_cli, "convert", "--help"], check=True, capture_output=True, text=True).stdout
    lines = text.splitlines()
    for vocabulary, option in CLI_OPTIONS.items():
        rows = [(code, wire, aliases) for v, code, wire, aliases in golden_rows if v == vocabulary]
        found = [i for i, line in enumerate(lines) if line.startswith(f"  {option} ")]
        assert len(found) == 1, (option, text)
        entry = lines[found[0]]
        if found[0] + 1 < len(lines) and lines[found[0] + 1].startswith(" " * 24):
            entry += lines[found[0] + 1]  # the description, on its own line after a long list
        assert entry.split()[1] == "|".join(wire for _, wire, _ in sorted(rows)), entry
        aliases = [alias for _, _, row_aliases in sorted(rows) for alias in row_aliases]
        if aliases:
            assert f"(also: {', '.join(aliases)})" in entry, entry
        else:
            assert "(also:" not in entry, entry


def test_memhal_convert_takes_every_golden_spelling_of_an_option_and_refuses_others(
        golden_rows: GoldenRows, memhal_cli: str, tmp_path: pathlib.Path) -> None:
    """Each wire string and alias parses (the conversion runs); an unknown one is a usage error listing the table."""
    import struct
    import zlib
    png = tmp_path / "in.png"
    raw = b"".join(b"\x00" + bytes(range(12)) for _ in range(4))

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)) +
                    chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    out = tmp_path / "out.rgb"
    for vocabulary, option in CLI_OPTIONS.items():
        for v, _, wire, aliases in golden_rows:
            if v != vocabulary:
                continue
            for spelling in [wire, wire.upper()] + aliases:
                done = subprocess.run([memhal_cli, "convert", str(png), str(out), option, spelling],
                                      capture_output=True, text=True)
                if spelling.lower() == "gl" and done.returncode == 1:
                    assert "gl backend" in done.stderr, done.stderr  # parsed; no GL driver here, and it says so
                    continue
                assert done.returncode == 0, (option, spelling, done.stderr)
        bad = subprocess.run([memhal_cli, "convert", str(png), str(out), option, "sideways"],
                             capture_output=True, text=True)
        wires = "|".join(wire for v, _, wire, _ in golden_rows if v == vocabulary)
        assert bad.returncode == 2, (option, bad.stderr)
        assert f"{option}: unknown {vocabulary} 'sideways' (expects {wires})" in bad.stderr, bad.stderr
