import type { Context } from 'hono';
import { getSignedCookie, setSignedCookie } from 'hono/cookie';
import { generateSecret, tokenMatches } from '../../../core/common/crypto.ts';

/**
 * The CSRF token of the forms shown before there is a session (log in, register): a random token
 * in a signed, SameSite=Strict cookie of its own and in the form's hidden field (double submit). A
 * cross-site post carries neither the cookie nor a way to read it. Pages opened in several tabs
 * share the token, so submitting one does not spoil the others.
 */
const FORM_COOKIE = 'ecpds_portal_form';

export async function formToken(c: Context, secret: string): Promise<string> {
  const token = (await getSignedCookie(c, secret, FORM_COOKIE)) || generateSecret();
  await setSignedCookie(c, FORM_COOKIE, token, secret, {
    httpOnly: true,
    secure: true,
    sameSite: 'Strict',
    path: '/portal',
    maxAge: 3600,
  });
  return token;
}

/** Whether the posted form carries the token of this browser's form cookie. */
export async function formTokenMatches(c: Context, secret: string, presented: unknown): Promise<boolean> {
  const expected = await getSignedCookie(c, secret, FORM_COOKIE);
  return typeof expected === 'string' && expected !== '' && tokenMatches(presented, expected);
}

export const FORM_REFUSED = 'Refused: the form is missing its CSRF token. Reload the page and try again.';
