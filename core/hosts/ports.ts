import type { EctransModule, Ecuser, Host, HostInput, TransferMethod } from '../destinations/model.ts';

export interface HostRepo {
  find(hostid: number): Promise<Host | null>;
  setData(hostid: number, data: string): Promise<void>;
  /** Up to `limit` hosts with options text, in hostid order after `afterHostid`. */
  optionTexts(afterHostid: number, limit: number): Promise<Array<{ hostid: number; data: string }>>;
  insert(host: HostInput): Promise<number>;
  /** A host with this nickname already associated with a local destination (the shared-host rule). */
  sharedByNickname(nickname: string): Promise<number | null>;
  associate(destination: string, hostid: number, priority: number): Promise<void>;
  /** Associations of these destinations, by destination then priority. */
  ofDestinations(names: string[]): Promise<Array<{ destination: string; priority: number; host: Host }>>;
}

/** Owners, transfer methods and their modules: shared reference data of destinations and hosts. */
export interface ReferenceRepo {
  ecusers(names: string[]): Promise<Ecuser[]>;
  methods(names: string[]): Promise<Array<TransferMethod & { ectransModule: EctransModule | null }>>;
  ensureEcuser(ecuser: Ecuser): Promise<void>;
  ensureModule(module: EctransModule): Promise<void>;
  ensureMethod(method: TransferMethod): Promise<void>;
}
