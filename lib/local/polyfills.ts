/**
 * Language features the local runtime's dependencies expect from Node 22 while pipegate still
 * runs locally on Node 20. Import this module before anything that needs them.
 *
 * aws-local-stepfunctions 3 calls `Promise.withResolvers` inside every Task state; without it
 * each task fails with a TypeError that a `Catch` on States.ALL would silently turn into a
 * failed execution.
 */

interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

if (typeof (Promise as unknown as { withResolvers?: unknown }).withResolvers !== 'function') {
  // ES2024 27.2.4.8: NewPromiseCapability(this), so subclasses get instances of themselves and a
  // non-constructor receiver throws a TypeError. Installed like the built-in: writable,
  // configurable, not enumerable.
  Object.defineProperty(Promise, 'withResolvers', {
    value: function withResolvers<T>(this: unknown): Resolvers<T> {
      if (typeof this !== 'function') {
        throw new TypeError('Promise.withResolvers called on a non-constructor');
      }
      const Ctor = this as PromiseConstructor;
      let resolve: Resolvers<T>['resolve'] | undefined;
      let reject: Resolvers<T>['reject'] | undefined;
      const promise = new Ctor<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      if (resolve === undefined || reject === undefined) {
        throw new TypeError('Promise resolve or reject function is not callable');
      }
      return { promise, resolve, reject };
    },
    writable: true,
    configurable: true,
    enumerable: false,
  });
}

export {};
