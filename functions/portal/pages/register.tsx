import type { Context, Hono } from 'hono';
import { isServiceError, type ServiceError } from '../../../core/common/errors.ts';
import { register, verificationPending, verify } from '../../../core/portal/registration.ts';
import { REGISTRATION_LIMITS, type RegistrationLimits } from '../../../core/portal/registration-rules.ts';
import type { Ports } from '../../../core/ports.ts';
import { ErrorNote, Notice, PortalPage } from '../layout.tsx';
import type { PortalSessionOptions } from '../session.ts';
import { FORM_REFUSED, formToken, formTokenMatches } from './form-token.ts';

export interface RegistrationOptions extends PortalSessionOptions {
  /**
   * The portal's public address, the start of the links it mails (`https://data.example.org`,
   * ECPDS_PORTAL_URL). Never the request's Host, which the visitor chooses: without it, registration
   * is unavailable.
   */
  origin?: string | null;
  /** How many registrations are mailed per client address and per e-mail (REGISTRATION_LIMITS when left out). */
  registrationLimits?: RegistrationLimits;
}

interface Entered {
  userId: string;
  name: string;
  email: string;
  iso: string;
}

const countriesOf = (ports: Ports) => ports.memo.get('portal:countries', () => ports.repos.portal.countries());

function RegisterForm(props: { token: string; entered: Entered; countries: Array<{ iso: string; name: string }> }) {
  const { entered } = props;
  return (
    <form method="post" action="/portal/register">
      <input type="hidden" name="csrf" value={props.token} />
      <input type="hidden" name="user" value={entered.userId} />
      <label for="name">Name</label>
      <input id="name" name="name" type="text" value={entered.name} autocomplete="name" maxlength={200} required />
      <label for="email">E-mail</label>
      <input
        id="email"
        name="email"
        type="email"
        value={entered.email}
        autocomplete="email"
        autocapitalize="none"
        maxlength={254}
        required
      />
      <label for="iso">Country</label>
      <select id="iso" name="iso" autocomplete="country" required>
        <option value="" selected={entered.iso === ''}>
          Choose your country
        </option>
        {props.countries.map((country) => (
          <option value={country.iso} selected={country.iso === entered.iso}>
            {country.name}
          </option>
        ))}
      </select>
      <button type="submit">Register</button>
    </form>
  );
}

const Unavailable = ({ message }: { message: string }) => (
  <PortalPage title="Registration is unavailable">
    <ErrorNote message={message} />
    <p>Ask the data portal's operators to register you, or try again later.</p>
  </PortalPage>
);

const NOT_CONFIGURED = 'Registration is unavailable: this server has no way to send e-mail.';
const NO_PUBLIC_ADDRESS = 'Registration is unavailable: this server is not configured with its public address.';
const MISSING_USER = 'This registration link is incomplete: it names no user (/portal/register?user=...).';

export function registrationPages(app: Hono, options: RegistrationOptions) {
  /** Why registration is off on this server, or null when it is on. */
  const unavailable = (ports: Ports) =>
    ports.mailer === null ? NOT_CONFIGURED : (options.origin ?? null) === null ? NO_PUBLIC_ADDRESS : null;
  const formPage = async (c: Context, entered: Entered, status: 200 | 400 | 409 | 429 | 503, message?: string) => {
    const ports = await options.portsFor(c);
    const [token, countries] = await Promise.all([formToken(c, options.cookieSecret), countriesOf(ports)]);
    return c.html(
      <PortalPage title="Register">
        <p>
          Register to get your own password for the files of <strong>{entered.userId}</strong>. We will send a link to
          your e-mail address to confirm it.
        </p>
        <ErrorNote message={message} />
        <RegisterForm token={token} entered={entered} countries={countries} />
      </PortalPage>,
      status,
    );
  };

  app.get('/register', async (c) => {
    const userId = c.req.query('user') ?? '';
    if (userId === '') return c.html(<Unavailable message={MISSING_USER} />, 400);
    const off = unavailable(await options.portsFor(c));
    if (off !== null) return c.html(<Unavailable message={off} />, 503);
    // The same form for every id: whether a user exists, and how it logs in, is told to nobody.
    return formPage(c, { userId, name: '', email: '', iso: '' }, 200);
  });

  app.post('/register', async (c) => {
    const body = await c.req.parseBody();
    if (!(await formTokenMatches(c, options.cookieSecret, body.csrf))) return c.text(FORM_REFUSED, 403);
    const field = (name: string) => (typeof body[name] === 'string' ? body[name] : '');
    const entered = { userId: field('user'), name: field('name'), email: field('email'), iso: field('iso') };
    const ports = await options.portsFor(c);
    const off = unavailable(ports);
    if (off !== null || !options.origin) return c.html(<Unavailable message={off ?? NO_PUBLIC_ADDRESS} />, 503);
    try {
      await register(ports, entered, {
        origin: options.origin,
        address: options.clientAddress(c),
        limits: options.registrationLimits ?? REGISTRATION_LIMITS,
      });
    } catch (e) {
      if (!isServiceError(e)) throw e;
      if (e.retryAfterSeconds !== undefined) c.header('Retry-After', String(e.retryAfterSeconds));
      return formPage(c, entered, statusOf(e), messageOf(e));
    }
    return c.html(
      <PortalPage title="Check your mail">
        <Notice>
          <p>
            We sent a link to <strong>{entered.email.trim()}</strong>. Open it within 24 hours to confirm your
            registration.
          </p>
        </Notice>
        <p class="muted">No mail? Look in your spam folder, or register again after a day.</p>
      </PortalPage>,
    );
  });

  // The mailed link only shows a form: mail scanners and link previews open links (GET), and must
  // not use the token up. The visitor's own click posts it, with the form's CSRF token.
  app.get('/verify', async (c) => {
    const token = c.req.query('token') ?? '';
    if (!plausibleToken(token)) return c.html(<InvalidLink />, 400);
    const ports = await options.portsFor(c);
    if (!(await verificationPending(ports, token))) return c.html(<InvalidLink />, 400);
    return c.html(<ConfirmForm csrf={await formToken(c, options.cookieSecret)} token={token} />);
  });

  app.post('/verify', async (c) => {
    const body = await c.req.parseBody();
    if (!(await formTokenMatches(c, options.cookieSecret, body.csrf))) return c.text(FORM_REFUSED, 403);
    const token = typeof body.token === 'string' ? body.token : '';
    if (!plausibleToken(token)) return c.html(<InvalidLink />, 400);
    const ports = await options.portsFor(c);
    try {
      const outcome = await verify(ports, token);
      return c.html(outcome === 'activated' ? <Activated /> : <AwaitingApproval />);
    } catch (e) {
      if (!isServiceError(e)) throw e;
      if (e.kind !== 'unavailable') return c.html(<InvalidLink />, 400);
      // Without a mailer nothing changed: the link works once mail does. A password mail that
      // failed left the subscriber verified, for an operator to approve.
      if (ports.mailer === null) return c.html(<Unavailable message={NOT_CONFIGURED} />, 503);
      return c.html(<AwaitingApproval problem={messageOf(e)} />, 503);
    }
  });
}

/** Tokens are 43 characters: anything much longer is no token of ours, and is not hashed. */
const plausibleToken = (token: string) => token !== '' && token.length <= 256;

const ConfirmForm = (props: { csrf: string; token: string }) => (
  <PortalPage title="Confirm your registration">
    <p>Confirm that this e-mail address is yours to complete your registration to the data portal.</p>
    <form method="post" action="/portal/verify">
      <input type="hidden" name="csrf" value={props.csrf} />
      <input type="hidden" name="token" value={props.token} />
      <button type="submit">Confirm</button>
    </form>
  </PortalPage>
);

const statusOf = (e: ServiceError) =>
  e.kind === 'conflict' ? 409 : e.kind === 'unavailable' ? 503 : e.kind === 'throttled' ? 429 : 400;
/** The core's texts, without the API's `Service unavailable:` prefix. */
const messageOf = (e: ServiceError) => {
  const text = e.message.replace(/^Service unavailable: /, '');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
};

const Activated = () => (
  <PortalPage title="Registration complete">
    <Notice>
      <p>Your e-mail address is confirmed and your access is open. Your password was mailed to you.</p>
    </Notice>
    <p>
      <a href="/portal/login">Log in</a> with the login and the password from that e-mail.
    </p>
  </PortalPage>
);

const AwaitingApproval = ({ problem }: { problem?: string }) => (
  <PortalPage title="Waiting for approval">
    <ErrorNote message={problem} />
    <Notice>
      <p>Your e-mail address is confirmed. An operator will now approve your registration.</p>
      <p>Once approved, you get your password by e-mail.</p>
    </Notice>
  </PortalPage>
);

const InvalidLink = () => (
  <PortalPage title="This link is not valid">
    <ErrorNote message="This verification link is not valid: it was used already, or it has expired." />
    <p>
      A link works once, for 24 hours. If you opened it before, your registration went through: look for the e-mail with
      your password, or wait for the approval. Otherwise, register again with the link you were given.
    </p>
  </PortalPage>
);
