// Exceptions thrown in Promise reactions: V8 sends each to the handler its
// builtin's table names for the frame's return address (in
// Builtins_PromiseFulfillReactionJob's original code). Prints what each
// handler caught, and exits 4 from an unhandled rejection's handler.
let caught = 0;
async function chain(n) {
  for (let i = 0; i < n; i++) {
    await Promise.resolve(i).then((v) => { if (v % 3 === 0) throw new Error('t' + v); return v; })
      .catch((e) => { caught++; return e.message; });
  }
}
Promise.resolve().then(() => { throw 1; }).catch((e) => console.log('caught', e));
Promise.reject(new TypeError('r')).then(() => 0, (e) => console.log('rejected', e.name));
chain(3000).then(() => {
  console.log('chain caught', caught);
  process.on('unhandledRejection', (e) => { console.log('unhandled', e); process.exitCode = 4; });
  Promise.resolve().then(() => { throw 'last'; });
});
