import type { PortalService } from './operations.ts';

export interface IncomingUser {
  id: string;
  email: string;
  iso: string;
  portalService: PortalService;
  active: boolean;
  /** AES-GCM sealed; null when the user was created without a password. */
  passwordSealed: string | null;
  lastLoginDate: Date | null;
}

export interface IncomingUserWithAssociations extends IncomingUser {
  associations: string[];
}

export interface IncomingUserRepo {
  find(id: string): Promise<IncomingUser | null>;
  insert(user: IncomingUser, at: Date): Promise<void>;
  update(id: string, patch: Partial<Omit<IncomingUser, 'id'>>, at: Date): Promise<void>;
  list(filter: { destination?: string }): Promise<IncomingUserWithAssociations[]>;
  addAssociation(id: string, destination: string): Promise<void>;
  /** Says whether an association was removed. */
  removeAssociation(id: string, destination: string): Promise<boolean>;
  associations(id: string): Promise<string[]>;
}
