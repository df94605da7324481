export interface WebUser {
  id: string;
  name: string | null;
  active: boolean;
  passwordSealed: string;
  /** scrypt hash checked at console login. */
  passwordHash: string;
}

export interface WebUserRepo {
  find(id: string): Promise<WebUser | null>;
  /** Inserts unless the id exists; says whether it inserted. */
  insert(user: WebUser, at: Date): Promise<boolean>;
  update(id: string, patch: Partial<Omit<WebUser, 'id'>>, at: Date): Promise<void>;
  listActive(filter: { category?: string }): Promise<Array<WebUser & { categories: string[] }>>;
  delete(id: string): Promise<boolean>;
}
