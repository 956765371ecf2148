import { randomBytes } from 'node:crypto';
import type { Random } from '../ports.ts';

/**
 * Production randomness: uniform doubles in [0, 1) from the OS CSPRNG, fetched in batches so that the
 * jitter on a retry does not cost a system call each time.
 */
export class CryptoRandom implements Random {
  private buffer = Buffer.alloc(0);
  private offset = 0;

  next(): number {
    if (this.offset + 8 > this.buffer.length) {
      this.buffer = randomBytes(8 * 256);
      this.offset = 0;
    }
    // 53 random bits make every double in [0, 1) with spacing 2^-53 equally likely.
    const high = this.buffer.readUInt32BE(this.offset) >>> 5;
    const low = this.buffer.readUInt32BE(this.offset + 4) >>> 6;
    this.offset += 8;
    return (high * 67108864 + low) / 9007199254740992;
  }
}
