// ThreadSanitizer support for Debian's prebuilt Abseil (linked only into
// --config=tsan binaries, see .bazelrc).
//
// Why: TSan learns happens-before edges from instrumented code and from the
// pthread calls it intercepts. Debian's libabsl_synchronization.so is not
// built with -fsanitize=thread, so absl::Mutex's lock/unlock (futexes and
// atomics inside that library) are invisible to it, and every access our code
// makes under an absl::Mutex from two threads is reported as a data race (a
// two-thread counter under absl::MutexLock reproduces it). Abseil's own TSan
// annotations exist only when Abseil itself is compiled with TSan.
//
// What: this file interposes the out-of-line absl::Mutex / absl::CondVar
// entry points. Each definition tells TSan "release" (__tsan_release) before
// the real call may give the mutex up and "acquire" (__tsan_acquire) after the
// real call returns holding it, then forwards to the library's definition
// found with dlsym(RTLD_NEXT). Conditions evaluated inside the library while
// the mutex is held are wrapped so their reads are ordered after an acquire.
// Only happens-before is modelled (no lock-set or deadlock reports), which is
// what removes the false reports without hiding real races: accesses not
// ordered by the mutex are still reported. Exported with -rdynamic so calls
// from other shared libraries (gRPC's gpr_mu/grpc_core::Mutex) resolve here
// too.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#ifndef __SANITIZE_THREAD__
#if defined(__has_feature)
#if !__has_feature(thread_sanitizer)
#error "tsan_absl_sync.cc is for --config=tsan builds only"
#endif
#else
#error "tsan_absl_sync.cc is for --config=tsan builds only"
#endif
#endif

// The mangled names below use the substitution S0_ for absl::<inline ns>.
static_assert(ABSL_OPTION_USE_INLINE_NAMESPACE == 1,
              "tsan_absl_sync.cc expects Abseil built with an inline namespace");

namespace {

#define MOETUNE_STR2(x) #x
#define MOETUNE_STR(x) MOETUNE_STR2(x)

// Itanium mangling of absl::<inline ns>::<Class>::<rest>: "_ZN4absl" +
// <len><inline ns> + <len><Class> + <rest>, e.g. Mutex::Lock() ->
// _ZN4absl7debian35Mutex4LockEv.
std::string Mangled(const char* cls, const char* rest) {
  const char* inline_ns = MOETUNE_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string ns = std::to_string(std::strlen(inline_ns)) + inline_ns;
  return "_ZN4absl" + ns + std::to_string(std::strlen(cls)) + cls + rest;
}

// The library's definition of `cls::rest`; aborts naming the symbol when
// missing (an Abseil whose ABI this file does not know must not run silently
// unannotated).
template <typename Fn>
Fn Real(const char* cls, const char* rest) {
  const std::string name = Mangled(cls, rest);
  void* sym = dlsym(RTLD_NEXT, name.c_str());
  if (sym == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: dlsym(RTLD_NEXT, %s) failed: %s\n",
                 name.c_str(), dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(sym);
}

void Acquired(absl::Mutex* mu) { __tsan_acquire(mu); }
void Releasing(absl::Mutex* mu) { __tsan_release(mu); }

// A condition evaluated by the library with `mu` held, possibly on another
// thread: a thread that unlocks evaluates the waiters' conditions. The
// wrapper is published (released) by the waiter before the library sees it;
// Eval acquires it and the last release of `mu`, evaluates, then releases
// both, so the predicate's reads are ordered before the next holder's writes
// and before the waiter reuses the wrapper's stack slot (Done()).
struct GuardedCondition {
  GuardedCondition(const absl::Condition* c, absl::Mutex* m) : cond(c), mu(m) {
    __tsan_release(this);
  }
  absl::Condition Published() { return absl::Condition(&Eval, this); }
  // The waiter holds `mu` again: order every evaluation before what follows.
  void Done() {
    __tsan_acquire(this);
    __tsan_acquire(mu);
  }

  static bool Eval(void* self) {
    __tsan_acquire(self);
    auto* g = static_cast<GuardedCondition*>(self);
    __tsan_acquire(g->mu);
    const bool holds = g->cond->Eval();
    __tsan_release(g->mu);
    __tsan_release(self);
    return holds;
  }

  const absl::Condition* cond;
  absl::Mutex* mu;
};

// Abseil's own lock-order checker keeps a graph behind a spin lock of its
// own inside the uninstrumented library, and TSan sees its memmove calls race.
// TSan is the race checker in these builds; switch Abseil's off.
const bool kAbslDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

using MutexFn = void (*)(Mutex*);
using MutexTryFn = bool (*)(Mutex*);
using CondFn = bool (*)(Mutex*, const Condition&);
using CondTimeoutFn = bool (*)(Mutex*, const Condition&, Duration);
using CondDeadlineFn = bool (*)(Mutex*, const Condition&, Time);
using CondAwaitFn = void (*)(Mutex*, const Condition&);
using LockWhenFn = void (*)(Mutex*, const Condition&);
using CvWaitFn = void (*)(CondVar*, Mutex*);
using CvTimeoutFn = bool (*)(CondVar*, Mutex*, Duration);
using CvDeadlineFn = bool (*)(CondVar*, Mutex*, Time);

void Mutex::Lock() {
  static const auto real = Real<MutexFn>("Mutex", "4LockEv");
  real(this);
  Acquired(this);
}
void Mutex::ReaderLock() {
  static const auto real = Real<MutexFn>("Mutex", "10ReaderLockEv");
  real(this);
  Acquired(this);
}
bool Mutex::TryLock() {
  static const auto real = Real<MutexTryFn>("Mutex", "7TryLockEv");
  const bool locked = real(this);
  if (locked) Acquired(this);
  return locked;
}
bool Mutex::ReaderTryLock() {
  static const auto real = Real<MutexTryFn>("Mutex", "13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) Acquired(this);
  return locked;
}
void Mutex::Unlock() {
  static const auto real = Real<MutexFn>("Mutex", "6UnlockEv");
  Releasing(this);
  real(this);
}
void Mutex::ReaderUnlock() {
  static const auto real = Real<MutexFn>("Mutex", "12ReaderUnlockEv");
  Releasing(this);
  real(this);
}

void Mutex::Await(const Condition& cond) {
  static const auto real =
      Real<CondAwaitFn>("Mutex", "5AwaitERKNS0_9ConditionE");
  GuardedCondition g(&cond, this);
  Releasing(this);
  real(this, g.Published());
  g.Done();
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<CondTimeoutFn>(
      "Mutex", "16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  GuardedCondition g(&cond, this);
  Releasing(this);
  const bool ok = real(this, g.Published(), timeout);
  g.Done();
  return ok;
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<CondDeadlineFn>(
      "Mutex", "17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  GuardedCondition g(&cond, this);
  Releasing(this);
  const bool ok = real(this, g.Published(), deadline);
  g.Done();
  return ok;
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real =
      Real<LockWhenFn>("Mutex", "8LockWhenERKNS0_9ConditionE");
  GuardedCondition g(&cond, this);
  real(this, g.Published());
  g.Done();
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real =
      Real<LockWhenFn>("Mutex", "14ReaderLockWhenERKNS0_9ConditionE");
  GuardedCondition g(&cond, this);
  real(this, g.Published());
  g.Done();
}
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<CondTimeoutFn>(
      "Mutex", "19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  GuardedCondition g(&cond, this);
  const bool ok = real(this, g.Published(), timeout);
  g.Done();
  return ok;
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<CondDeadlineFn>(
      "Mutex", "20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  GuardedCondition g(&cond, this);
  const bool ok = real(this, g.Published(), deadline);
  g.Done();
  return ok;
}
bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<CondTimeoutFn>(
      "Mutex", "25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  GuardedCondition g(&cond, this);
  const bool ok = real(this, g.Published(), timeout);
  g.Done();
  return ok;
}
bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<CondDeadlineFn>(
      "Mutex", "26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  GuardedCondition g(&cond, this);
  const bool ok = real(this, g.Published(), deadline);
  g.Done();
  return ok;
}

void CondVar::Wait(Mutex* mu) {
  static const auto real = Real<CvWaitFn>("CondVar", "4WaitEPNS0_5MutexE");
  Releasing(mu);
  real(this, mu);
  Acquired(mu);
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real = Real<CvTimeoutFn>(
      "CondVar", "15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  Releasing(mu);
  const bool timed_out = real(this, mu, timeout);
  Acquired(mu);
  return timed_out;
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = Real<CvDeadlineFn>(
      "CondVar", "16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Releasing(mu);
  const bool timed_out = real(this, mu, deadline);
  Acquired(mu);
  return timed_out;
}

ABSL_NAMESPACE_END
}  // namespace absl

// gRPC hands buffers between its threads through its own lock-free queues
// and combiners inside uninstrumented libraries; TSan then sees only the libc
// and allocator calls it intercepts there (sendmsg, memcpy, new/delete) and
// reports them racing. ignore_noninstrumented_modules makes those intercepted
// calls count only when made from instrumented code; every access made by
// moetune's own code is still checked. halt_on_error: the first report fails
// the process (a server started by an integration test included).
extern "C" const char* __tsan_default_options() {
  return "ignore_noninstrumented_modules=1:halt_on_error=1:"
         "second_deadlock_stack=1";
}

// The intercepted calls of the uninstrumented gRPC libraries that
// ignore_noninstrumented_modules does not cover (its allocator hooks); and
// leak reports for threads gRPC itself starts (grpc_core::Thread: its
// executor, timer and shutdown threads, which grpc_shutdown joins
// asynchronously, so a short-lived client can exit with one finished but
// not yet joined -- seen once in CI in server_commands_test's unreachable-
// server case). Threads moetune starts are still checked for leaks.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgpr.so\n"
         "thread:grpc_core::Thread::Thread\n";
}
