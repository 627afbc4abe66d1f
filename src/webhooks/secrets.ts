import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** A new endpoint secret, as Standard Webhooks writes them: `whsec_` and the base64 of 32 random bytes. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Endpoint secrets at rest. They sign every delivery, so they must be recoverable (a hash would
 * not do): encrypted with AES-256-GCM under WEBHOOK_SECRET_KEY, as `v1:<iv>:<tag>:<ciphertext>`.
 * Without a key they are stored as `v0:<secret>` (development; the service warns at start), which
 * still reads once a key is set; new secrets are then sealed.
 */
export function secretBox(keyBase64: string | undefined) {
  const key = keyBase64 ? Buffer.from(keyBase64, 'base64') : undefined;
  return {
    seal(secret: string): string {
      if (!key) return `v0:${secret}`;
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
    },
    open(sealed: string): string {
      if (sealed.startsWith('v0:')) return sealed.slice(3);
      if (!key) throw new Error('A webhook secret is encrypted, and WEBHOOK_SECRET_KEY is not set.');
      const [, iv, tag, data] = sealed.split(':') as [string, string, string, string];
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}

export type SecretBox = ReturnType<typeof secretBox>;
