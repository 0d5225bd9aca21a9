/** The floor for bundle size and cold init: a handler that does nothing, bundled like the others. */
export async function handler(): Promise<{ statusCode: number; body: string }> {
  return { statusCode: 200, body: 'hello' };
}
