/* Preloaded under valgrind by bench/where-the-time-goes.sh: libhwy's timer set-up runs rdtscp,
 * an instruction valgrind 3.19 does not decode (SIGILL before main). The instruction counts
 * measured never use Highway's timer, so its resolution is answered without it. */
unsigned long long _ZN3hwy8platform15TimerResolutionEv(void) {
  return 1;
}
