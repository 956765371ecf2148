import { randomBytes } from 'node:crypto';

/**
 * O3: the secret an operator's dashboard prints at start and asks of every action: 24 bytes from the
 * OS CSPRNG, as base64url (32 characters). The production adapter of the dashboard's one random need.
 */
export function randomToken(): string {
  return randomBytes(24).toString('base64url');
}
