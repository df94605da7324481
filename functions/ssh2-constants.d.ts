// ssh2 has no types for its protocol constants; only what is read of them here.
declare module 'ssh2/lib/protocol/constants.js' {
  const constants: {
    /** ssh2's cipher names that this runtime's crypto can run (ssh2 filters them by crypto.getCiphers()). */
    SUPPORTED_CIPHER: readonly string[];
  };
  export default constants;
}
