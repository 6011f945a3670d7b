import { packHome } from "../src/checkpoint/pack-home.ts";

for (let i = 0; i < 3; i++) {
  const t = performance.now();
  const p = packHome("/tmp/ckb/small");
  let n = 0;
  for await (const c of p.tar) n += c.length;
  console.log((performance.now() - t).toFixed(0), "ms", n);
}
