import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fingerprint, requestKey } from './fingerprint.ts';

/**
 * R3 by behaviour: the request key names the effect, not the way its payload happened to be built. The
 * same items in another order, or the same object with its keys inserted in another order, are the same
 * effect and must get the same key (or a takeover that rebuilt the payload would run the effect twice);
 * anything that changes what the effect does must change the key (or a different effect would get the
 * first one's result back). Pinned trace hashes alone did not notice when the sort by id was removed.
 */
const cart = {
  orderId: 'o-7',
  items: [
    { id: 'sku-b', quantity: 2, price: 300 },
    { id: 'sku-a', quantity: 1, price: 150 },
    { id: 'sku-c', quantity: 5, price: 20 },
  ],
};

/** The same data with every array of items reversed and every object's keys inserted in reverse order. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(reordered);
    return items.every((item) => typeof item === 'object' && item !== null && 'id' in item) ? items.reverse() : items;
  }
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.keys(value).reverse().map((key) => [key, reordered((value as Record<string, unknown>)[key])]));
}

describe('R3 effect request keys', () => {
  it('are runId:action:fingerprint', () => {
    expect(requestKey(42, 'refund', cart)).toMatch(/^42:refund:[0-9a-f]{24}$/);
    expect(requestKey(42, 'refund', cart)).toBe(`42:refund:${fingerprint(cart)}`);
  });

  it('are the same for the same items in another order', () => {
    const [b, a, c] = cart.items;
    for (const items of [[a, b, c], [c, b, a], [b, c, a], [a, c, b]]) {
      expect(requestKey(1, 'refund', { ...cart, items }), JSON.stringify(items)).toBe(requestKey(1, 'refund', cart));
    }
    // A bare array of items is a set too, and numeric ids sort as well as string ones.
    expect(fingerprint([{ id: 10, n: 1 }, { id: 9, n: 2 }, { id: 2, n: 3 }])).toBe(fingerprint([{ id: 2, n: 3 }, { id: 10, n: 1 }, { id: 9, n: 2 }]));
  });

  it('are the same whatever order the object keys were inserted in', () => {
    const shuffled = { items: cart.items.map(({ price, quantity, id }) => ({ price, quantity, id })), orderId: cart.orderId };
    expect(requestKey(1, 'refund', shuffled)).toBe(requestKey(1, 'refund', cart));
  });

  it('are the same for nested items and objects in another order', () => {
    const shipment = {
      carrier: { name: 'post', service: { level: 'express', insured: true } },
      parcels: [
        { id: 'p1', items: [{ id: 'sku-a', quantity: 1 }, { id: 'sku-b', quantity: 2 }], weightG: 900 },
        { id: 'p2', items: [{ id: 'sku-d', quantity: 4 }, { id: 'sku-c', quantity: 3 }], weightG: 400 },
      ],
    };
    expect(requestKey(3, 'ship', reordered(shipment))).toBe(requestKey(3, 'ship', shipment));
    expect(JSON.stringify(reordered(shipment))).not.toBe(JSON.stringify(shipment));
  });

  it('differ when anything the effect does differs', () => {
    const key = requestKey(1, 'refund', cart);
    const withItems = (items: typeof cart.items) => requestKey(1, 'refund', { ...cart, items });
    const [b, a, c] = cart.items as [(typeof cart.items)[0], (typeof cart.items)[0], (typeof cart.items)[0]];
    const different = {
      'a changed quantity': withItems([{ ...b, quantity: 3 }, a, c]),
      'a changed price': withItems([b, a, { ...c, price: 21 }]),
      'an added item': withItems([b, a, c, { id: 'sku-d', quantity: 1, price: 1 }]),
      'a removed item': withItems([b, a]),
      'a changed id': withItems([b, { ...a, id: 'sku-z' }, c]),
      'a quantity moved to another item': withItems([{ ...b, quantity: 1 }, { ...a, quantity: 2 }, c]),
      'another order id': requestKey(1, 'refund', { ...cart, orderId: 'o-8' }),
      'an added field': requestKey(1, 'refund', { ...cart, note: 'late' }),
      'another action': requestKey(1, 'charge', cart),
      'another run': requestKey(2, 'refund', cart),
    };
    for (const [change, changed] of Object.entries(different)) expect(changed, change).not.toBe(key);
    expect(new Set(Object.values(different)).size, 'every change gives its own key').toBe(Object.keys(different).length);
  });

  it('differ for a change deep inside nested items and objects', () => {
    const order = { customer: { address: { city: 'Lyon' } }, lines: [{ id: 'l1', parts: [{ id: 'x', quantity: 1 }] }] };
    const key = requestKey(5, 'order', order);
    expect(requestKey(5, 'order', { ...order, customer: { address: { city: 'Nantes' } } })).not.toBe(key);
    expect(requestKey(5, 'order', { ...order, lines: [{ id: 'l1', parts: [{ id: 'x', quantity: 2 }] }] })).not.toBe(key);
    expect(requestKey(5, 'order', { ...order, lines: [{ id: 'l1', parts: [{ id: 'x', quantity: 1 }, { id: 'y', quantity: 1 }] }] })).not.toBe(key);
    expect(requestKey(5, 'order', { ...order, lines: [{ id: 'l1', parts: [] }] })).not.toBe(key);
  });

  it('keep the order of a list whose elements carry no id', () => {
    // Only items with ids form a set; the order of plain values (steps, a route) is part of the effect.
    expect(fingerprint({ route: ['a', 'b', 'c'] })).not.toBe(fingerprint({ route: ['c', 'b', 'a'] }));
    expect(fingerprint([{ n: 1 }, { n: 2 }])).not.toBe(fingerprint([{ n: 2 }, { n: 1 }]));
  });

  it('do not depend on the order of items with distinct ids, for any items', () => {
    const item = fc.record({ quantity: fc.integer({ min: 0, max: 99 }), sku: fc.string({ maxLength: 4 }) });
    const items = fc.uniqueArray(fc.tuple(fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), item), { minLength: 1, maxLength: 8, selector: ([id]) => String(id) });
    fc.assert(
      fc.property(items, fc.func(fc.integer()), (entries, rank) => {
        const list = entries.map(([id, fields]) => ({ id, ...fields }));
        const shuffled = [...list].sort((x, y) => rank(x.id) - rank(y.id) || list.indexOf(x) - list.indexOf(y));
        expect(requestKey(9, 'refund', { items: shuffled })).toBe(requestKey(9, 'refund', { items: list }));
        const bumped = list.map((entry, index) => (index === 0 ? { ...entry, quantity: entry.quantity + 1 } : entry));
        expect(requestKey(9, 'refund', { items: bumped })).not.toBe(requestKey(9, 'refund', { items: list }));
      }),
    );
  });
});
