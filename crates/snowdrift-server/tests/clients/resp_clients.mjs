// ioredis and node-redis, the most used Node clients, against snowdrift's RESP listener.
// ioredis must connect (its ready check sends INFO) and take IDs; node-redis returns INCR's
// integer reply as a JavaScript number, which cannot hold a 64-bit snowflake ID, so a
// JavaScript user asks `SNOWFLAKE name decimal` (a bulk string) instead, as README says.
// Run by scripts/resp-clients; exits non-zero on the first thing that does not hold.
//
// Usage: node resp_clients.mjs RESP_HOST:PORT HTTP_BASE TAG

import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient } from 'redis';

const [address, http, tag] = process.argv.slice(2);
const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];

async function decoded(name, idText) {
  const r = await fetch(`${http}/v1/ids/${name}/decode/${idText}`);
  const body = await r.text();
  assert.equal(r.status, 200, body);
  return JSON.parse(body);
}

// --- ioredis: connects (INFO ready check), INCR, SNOWFLAKE, a MULTI/EXEC transaction ---
const io = new Redis({ host, port, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 60000 });
await new Promise((resolve, reject) => {
  io.once('ready', resolve);
  io.once('error', reject);
  io.once('end', () => reject(new Error('ioredis closed the connection before it was ready')));
});
const first = await io.incr(tag);
assert.equal(await io.incr(tag), first + 1);
const text = await io.call('SNOWFLAKE', 'snowflake', 'decimal');
assert.equal(typeof text, 'string');
assert.match(text, /^[0-9]{18,20}$/);
assert.equal((await decoded('snowflake', text)).id, text);
const replies = await io.multi().incr(tag).incr(tag).exec();
assert.deepEqual(replies, [[null, first + 2], [null, first + 3]]);
io.disconnect();

// --- node-redis: INCR's number loses digits; SNOWFLAKE name decimal keeps them -----------
const client = createClient({ socket: { host, port, connectTimeout: 60000, reconnectStrategy: false } });
client.on('error', (e) => { throw e; });
await client.connect();
const asNumber = await client.incr('snowflake');
assert.equal(typeof asNumber, 'number');
// A snowflake ID is above 2^53: a JavaScript number cannot hold every digit of it.
assert.ok(!Number.isSafeInteger(asNumber), `${asNumber} should be past 2^53`);
const exact = await client.sendCommand(['SNOWFLAKE', 'snowflake', 'decimal']);
assert.equal(typeof exact, 'string');
assert.match(exact, /^[0-9]{18,20}$/);
assert.ok(BigInt(exact) > BigInt(Number.MAX_SAFE_INTEGER));
assert.equal((await decoded('snowflake', exact)).id, exact, 'the string holds every digit');
assert.equal(await client.incr(tag), first + 4);
await client.quit();

console.log('ioredis and node-redis: connect, INCR, SNOWFLAKE name decimal, MULTI/EXEC: ok');
