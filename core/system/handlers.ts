import { VERSION } from './version.ts';

export const version = async () => ({ version: VERSION });
