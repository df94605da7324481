import type { CommandContext } from './cli-io.ts';

/**
 * The command groups a running server takes from the command line (command-server.ts): with the
 * embedded database held by a server, they run in it rather than needing it stopped. The others
 * (migrations, imports, the sweep, API clients) still need it stopped, and say so.
 */
export const SERVED_GROUPS = ['incoming', 'destination', 'transfer', 'host', 'webuser'] as const;

export const isServed = (argv: readonly string[]) => (SERVED_GROUPS as readonly string[]).includes(argv[0] ?? '');

/**
 * Runs a command's body here, or hands the whole command line to the running server that holds the
 * embedded database (command-forward.ts), which runs it as its own change, with the same output.
 */
export async function runServed<B>(ctx: CommandContext, load: () => Promise<B>, body: (bodies: B) => Promise<void>) {
  if (await (await import('./command-forward.ts')).handedToServer(ctx)) return;
  await body(await load());
}
