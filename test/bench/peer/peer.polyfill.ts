/**
 * PostGraphile 5 declares Node ≥ 22 and calls `Promise.withResolvers` (Node 22's); the bench
 * measures it beside livegate on Node 20 too, so there it gets the standard's few lines. Imported
 * before PostGraphile, so it is in place before any of its code runs; a no-op where Node has it.
 */
if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void
      let reject!: (reason?: unknown) => void
      const promise = new Promise<T>((ok, fail) => {
        resolve = ok
        reject = fail
      })
      return { promise, resolve, reject }
    },
  })
}
