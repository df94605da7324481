/** Release identifier MAJOR.MINOR.PATCH-DDMMYYYY (spec §9): package version and build date. */
export const RELEASE = '8.2.0';
export const BUILD_DATE = '23112026';
export const VERSION = `${RELEASE}-${BUILD_DATE}`;
export const PRODUCT = 'ECPDS';
