/**
 * Connections not in yet (an SFTP connection not logged in, an HTTPS one without its first request's
 * headers), counted in all and per address, as OpenSSH's MaxStartups (and PerSourceMaxStartups)
 * count them: beyond either bound a new connection is dropped at once, so that idle or slow
 * handshakes cannot take every place, while connections already in are not counted.
 */
export class StartupLimits {
  private total = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(private readonly limits: { total: number; perAddress: number }) {}

  /** Whether a new connection from `address` may start; if so it counts until `release`. */
  admit(address: string): boolean {
    const fromAddress = this.perAddress.get(address) ?? 0;
    if (this.total >= this.limits.total || fromAddress >= this.limits.perAddress) return false;
    this.total++;
    this.perAddress.set(address, fromAddress + 1);
    return true;
  }

  /** The connection admitted from `address` got in or ended. */
  release(address: string) {
    const fromAddress = this.perAddress.get(address) ?? 0;
    if (fromAddress === 0) return;
    this.total--;
    if (fromAddress === 1) this.perAddress.delete(address);
    else this.perAddress.set(address, fromAddress - 1);
  }
}
