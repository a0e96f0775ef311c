#!/usr/bin/env bash
# memhal demo (the main job) and memhal inspect, as a user runs them: a run, Ctrl-C, a second
# process that stalls or dies, strict arguments.
set -u
memhal=$1
work=$(mktemp -d)
demo_pid=
cleanup() {
  # A demo a failed check left running: its whole process group (it was started with setsid).
  [ -n "$demo_pid" ] && kill -KILL -- -"$demo_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

"$memhal" demo --frames 30 --fps 60 --size 320x240 --record "$work/demo.mhrec" >"$work/out" 2>"$work/err"
check "demo exits 0" test $? -eq 0
summary=$(tail -1 "$work/out")
echo "$summary"
check "summary line has the documented form" grep -qE \
  '^summary: frames=30 bytes_shared=[0-9]+ bytes_copied=0 p50_latency_us=[0-9]+ p99_latency_us=[0-9]+ checksum_errors=0 lost_frames=0 preprocess_p50_us=[1-9][0-9]* dropped_frames=0$' \
  <<<"$summary"
check "the model input is announced" grep -q "^memhal demo: model input 640x640 planar_rgb f32, letterboxed" "$work/out"
"$memhal" demo --frames 3 --size 64x48 --model-input none >"$work/none" 2>&1
check "--model-input none leaves the third branch out" grep -qE 'lost_frames=0 preprocess_p50_us=0 dropped_frames=0$' \
  "$work/none"
"$memhal" demo --frames 3 --size 64x48 --model-input 96x64 >"$work/small" 2>&1
check "--model-input WxH sets its size" grep -q "^memhal demo: model input 96x64 planar_rgb" "$work/small"

"$memhal" inspect "$work/demo.mhrec" >"$work/inspect"
check "inspect exits 0" test $? -eq 0
check "inspect lists 30 records" grep -q "^30 records$" "$work/inspect"
check "inspect names backing, dtype, shape and format" grep -qE '^0 +[0-9.]+ +(shm|dmabuf) +u8 +\[240,320\] +nv12 +115200$' \
  "$work/inspect"

size=$(stat -c %s "$work/demo.mhrec")
head -c $((size - 1000)) "$work/demo.mhrec" >"$work/cut.mhrec"
"$memhal" inspect "$work/cut.mhrec" >"$work/cut" 2>&1
check "inspect of a truncated recording exits 1" test $? -eq 1
check "and still lists the intact records" grep -q "^29 intact records before the damage$" "$work/cut"

"$memhal" demo --memory mem --frames 2 >/dev/null 2>"$work/mem_err"
check "demo over heap memory is refused" test $? -ne 0
check "with advice to allocate shm" grep -q "allocate it as shm" "$work/mem_err"
"$memhal" demo --frames >/dev/null 2>&1
check "bad demo arguments exit 2" test $? -eq 2

# Numbers are the whole argument, in range and finite; the error names the argument. (The
# timeout catches the old failure: --frames -5 wrapped to 2^64 - 5 and ran for ever.)
bad_args() { # expected-name, arguments...
  local name=$1; shift
  timeout 10 "$memhal" demo "$@" --size 64x48 >/dev/null 2>"$work/usage"
  local rc=$?
  check "demo $* is a usage error (exit 2) naming $name" test $rc -eq 2
  check "  and the message names $name" grep -q -- "^memhal demo: $name" "$work/usage"
}
bad_args --frames --frames -5
bad_args --frames --frames -1
bad_args --frames --frames 1e3
bad_args --frames --frames 10abc
bad_args --frames --frames 0
bad_args --fps --fps nan --frames 2
bad_args --fps --fps inf --frames 2
bad_args --fps --fps 1e-300 --frames 2
bad_args --seconds --seconds 1.5s
bad_args --seconds --seconds nan
bad_args --size --frames 2 --size 64x48x1
bad_args "--seconds and --frames" --frames 10 --seconds 1
bad_args --model-input --frames 2 --model-input 640
bad_args "--memory and --camera" --frames 2 --memory shm --camera /dev/video0
"$memhal" demo --frames 2 --camera /dev/video-memhal-none >/dev/null 2>"$work/nocam"
check "demo --camera with no such device exits 1" test $? -eq 1
check "  naming the device" grep -q "camera: unavailable: open of camera /dev/video-memhal-none failed" "$work/nocam"
touch "$work/taken"
"$memhal" demo --frames 2 --size 64x48 --serve "$work/taken" >/dev/null 2>"$work/serve_err"
check "demo --serve on an existing path exits 1" test $? -eq 1
check "  saying the path exists" grep -q "^memhal demo: --serve $work/taken: the path exists" "$work/serve_err"
check "  and leaves the file alone" test -f "$work/taken"
bad_args --serve --frames 2 --serve=
"$memhal" demo --frames 3 --size 64x48 --serve "$work/served.sock" >"$work/serve" 2>&1
check "demo --serve with no consumer runs as before" grep -qE '^summary: frames=3 .* checksum_errors=0 lost_frames=0 ' \
  "$work/serve"
check "  and removes its socket" test ! -e "$work/served.sock"
"$memhal" demo --frames=3 --size=64x48 --fps=100 >"$work/eq" 2>&1
check "--name=value options work" grep -qE '^summary: frames=3 .* checksum_errors=0 lost_frames=0 .*dropped_frames=0$' "$work/eq"
"$memhal" help demo | grep -q "usage: memhal demo"
check "memhal help demo prints the demo's usage" test $? -eq 0

# start_demo ARGS...: the demo in a session (process group) of its own, as a terminal runs a
# job; sets demo_pid, waits for its first line and sets peer_pid from it. A script starts
# background commands with SIGINT ignored, which a terminal does not: env puts it back.
start_demo() {
  setsid env --default-signal=INT "$memhal" demo "$@" >"$work/run.out" 2>"$work/run.err" &
  demo_pid=$!
  peer_pid=
  for _ in $(seq 100); do
    peer_pid=$(sed -n 's/.*second process pid \([0-9]*\)$/\1/p' "$work/run.out")
    [ -n "$peer_pid" ] && break
    sleep 0.1
  done
  [ "$(ps -o pgid= -p "$demo_pid" | tr -d ' ')" = "$demo_pid" ] || echo "FAIL: the demo is not a process group leader"
}
# wait_demo SECONDS: waits for the demo to end, at most SECONDS; sets rc (999: still running)
# and took (seconds waited).
wait_demo() {
  local start=$SECONDS
  rc=999
  for _ in $(seq $(($1 * 10))); do
    if ! kill -0 "$demo_pid" 2>/dev/null; then wait "$demo_pid"; rc=$?; break; fi
    sleep 0.1
  done
  took=$((SECONDS - start))
  [ $rc -eq 999 ] || demo_pid=
}
summary_re='^summary: frames=[0-9]+ bytes_shared=[0-9]+ bytes_copied=0 p50_latency_us=[0-9]+ p99_latency_us=[0-9]+ checksum_errors=0 lost_frames='
tail_re=' preprocess_p50_us=[0-9]+ dropped_frames=0$'

# (a) Ctrl-C: SIGINT reaches the whole process group. Both processes end cleanly, the second
# one after checking every frame it was sent; the summary is printed and the exit status is 0.
start_demo --seconds 60 --fps 60 --size 320x240
sleep 1
kill -INT -- -"$demo_pid"
wait_demo 10
check "Ctrl-C ends the demo with exit 0 (got $rc)" test $rc -eq 0
check "  with the summary line, no checksum error, no lost frame" \
  grep -qE "${summary_re}0${tail_re}" <(tail -1 "$work/run.out")
check "  and no complaint about the second process" bash -c "! grep -qiE 'second process|broken pipe' '$work/run.err'"
check "  and the second process has ended" bash -c "! kill -0 $peer_pid 2>/dev/null"
check "  and per-second lines with the preprocess and dropped fields" grep -qE \
  '^t=1s frames=[0-9]+ .* in_flight=[0-9]+ preprocess_p50_us=[1-9][0-9]* dropped_frames=0$' "$work/run.out"

# (b) A stalled second process (stopped): named, killed, and the demo ends within seconds.
start_demo --seconds 60 --fps 60 --size 320x240
sleep 1
kill -STOP "$peer_pid"
wait_demo 15
check "a stalled second process ends the demo within 15 s with exit 1 (got $rc after ${took}s)" test $rc -eq 1
check "  naming it and its pid" grep -q "the second process (pid $peer_pid) stalled" "$work/run.err"
check "  with the frames it held as lost_frames, not checksum errors" \
  grep -qE "${summary_re}[1-9][0-9]*${tail_re}" <(tail -1 "$work/run.out")
check "  and the stalled process is gone" bash -c "! kill -0 $peer_pid 2>/dev/null"

# (c) A second process killed while it holds frames: reported by name, its frames lost.
start_demo --seconds 60 --fps 60 --size 320x240
sleep 1
kill -STOP "$peer_pid"  # let frames pile up in flight, then kill it holding them
sleep 0.5
kill -KILL "$peer_pid"
wait_demo 15
check "a killed second process ends the demo with exit 1 (got $rc after ${took}s)" test $rc -eq 1
check "  saying how it ended" grep -q "the second process (pid $peer_pid) was killed by signal 9" "$work/run.err"
check "  with lost_frames counted, not checksum errors" grep -qE "${summary_re}[1-9][0-9]*${tail_re}" <(tail -1 "$work/run.out")
check "  and no broken pipe" bash -c "! grep -qi 'broken pipe' '$work/run.err'"
"$memhal" inspect >/dev/null 2>&1
check "inspect without a file exits 2" test $? -eq 2

echo "demo: $failures failed"
exit $((failures > 0))
