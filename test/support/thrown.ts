/**
 * What a call throws, for tests that look inside the error: fails the test when the call
 * returns or throws something other than the expected kind.
 */
type ErrorClass<E> = abstract new (...args: never[]) => E;

export function thrown<E>(fn: () => unknown, kind: ErrorClass<E>): E {
  try {
    fn();
  } catch (e) {
    if (e instanceof kind) return e;
    throw e;
  }
  throw new Error(`expected a ${kind.name}`);
}

export async function rejection<E>(p: Promise<unknown>, kind: ErrorClass<E>): Promise<E> {
  try {
    await p;
  } catch (e) {
    if (e instanceof kind) return e;
    throw e;
  }
  throw new Error(`expected a ${kind.name}`);
}
