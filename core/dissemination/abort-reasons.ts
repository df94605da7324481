/** Why an attempt was aborted: the transfer was taken away (stop, delete, lost lease), or the mover stops. */
export class TakenAway extends Error {}
export class MoverStopping extends Error {}
