/**
 * Run `use` with a signal that aborts when `outer` does or after `ms` milliseconds, whichever comes
 * first; the timer is cleared when `use` settles.
 *
 * Not `AbortSignal.any([outer, AbortSignal.timeout(ms)])`: on Node 20 nothing holds the timeout
 * signal strongly once only the composite refers to it, so under memory pressure it can be
 * garbage-collected and never fire — a request to a peer that sends headers and then nothing hung
 * for good in the test suite (test/view/hostile.test.ts). Here the timer holds the controller.
 */
export const withDeadlineSignal = async <A>(outer: AbortSignal, ms: number, use: (signal: AbortSignal) => Promise<A>): Promise<A> => {
  const controller = new AbortController()
  const abort = () => controller.abort(outer.reason)
  if (outer.aborted) abort()
  else outer.addEventListener("abort", abort, { once: true })
  const timer = setTimeout(() => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms)
  try {
    return await use(controller.signal)
  } finally {
    clearTimeout(timer)
    outer.removeEventListener("abort", abort)
  }
}
