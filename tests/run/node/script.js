// node running a real script: JSON, promises and async functions,
// exceptions thrown and caught across frames, a hot loop that V8 compiles,
// and a stack trace read from an Error.
'use strict';

function parseAll(n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const text = JSON.stringify({ id: i, tags: ['a', 'b', String(i % 7)], nested: { v: i * 1.5 } });
    out.push(JSON.parse(text));
  }
  return out;
}

function deep(n) {
  if (n === 0) throw new RangeError('bottom');
  return deep(n - 1) + 1;
}

function hot(n) {   // JIT-compiled after a few thousand iterations
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + ((i * 2654435761) >>> 7)) % 1000003;
  return s;
}

async function worker(id) {
  await new Promise((r) => setTimeout(r, 1));
  if (id % 3 === 0) throw new Error(`worker ${id} failed`);
  return id * id;
}

async function main() {
  const docs = parseAll(20000);
  console.log('json:', docs.length, docs[1234].nested.v, docs[19999].tags.join(''));
  let caught = 0;
  for (let i = 0; i < 200; i++) {
    try { deep(50 + (i % 50)); } catch (e) { if (e instanceof RangeError) caught++; }
  }
  console.log('exceptions:', caught);
  try { deep(3); } catch (e) {
    console.log('stack frames named deep:', e.stack.split('\n').filter((l) => l.includes('deep')).length);
  }
  console.log('hot:', hot(5e6));
  const results = await Promise.allSettled([...Array(12).keys()].map(worker));
  console.log('promises:', results.map((r) => (r.status === 'fulfilled' ? r.value : r.reason.message)).join(', '));
  try { JSON.parse('{bad json'); } catch (e) { console.log('json error:', e.name); }
}

main().then(() => { process.exitCode = 3; });
