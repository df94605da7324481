/** Why an attempt was aborted: the transfer was taken away (stop, delete, lost lease), or the mover stops. */
export class TakenAway extends Error {}
/**
 * The attempt's lease may have lapsed unrenewed (the renewals failed, or the process was paused):
 * another mover may be sending the transfer already, so nothing the attempt still holds may go out.
 */
export class LeaseLapsed extends TakenAway {}
export class MoverStopping extends Error {}
