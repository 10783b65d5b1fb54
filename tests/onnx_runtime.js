// onnx_runtime.js DIR ORT_MODULE — onnxruntime's side of ctest onnx.runtime: every model of
// DIR/cases.txt (written by test_onnx_export) run by onnxruntime (the npm package at
// ORT_MODULE: onnxruntime-node, or onnxruntime-web's WebAssembly build) on its two inputs
// NAME.in{K}.f32 (N x 3 x H x W float32; video N x T x 3 x H x W), its output compared with PixFlow's own inference
// NAME.out{K}.f32: max |difference| must be <= 1e-4 (outputs are ~[0, 1]). Where
// NAME.png{K}.u8 exists (ctest onnx.upscale: `pixflow upscale`'s PNG of that input, H x W x 3
// bytes, one sample), onnxruntime's output rounded as upscale rounds it, round(clamp(y, 0, 1)
// x 255) half up (common/metrics.c pf_to_u8), must equal it within 1 grey level. Prints one
// line a run; exits 1 when any differs or fails.
'use strict';
const fs = require('fs');
const path = require('path');
const [dir, mod] = process.argv.slice(2);
const ort = require(mod);
const TOL = 1e-4;
const PNG_TOL = 1;   // grey levels

// onnxruntime's output (1 x 3 x H x W) rounded against `pixflow upscale`'s bytes (H x W x 3):
// the largest difference in grey levels and how many bytes differ at all.
function comparePng(out, png) {
  const hw = png.length / 3;
  let max = 0, differ = 0;
  if (out.length !== png.length) return { max: Infinity, differ: png.length };
  for (let i = 0; i < hw; i++)
    for (let c = 0; c < 3; c++) {
      const v = out[c * hw + i] * 255;
      const u = !(v > 0) ? 0 : v >= 255 ? 255 : Math.floor(v + 0.5);
      const d = Math.abs(u - png[i * 3 + c]);
      max = Math.max(max, d);
      differ += d > 0;
    }
  return { max, differ };
}

function readF32(file) {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
}

async function main() {
  const lines = fs.readFileSync(path.join(dir, 'cases.txt'), 'utf8').trim().split('\n');
  const sessions = {};
  let bad = 0;
  for (const line of lines) {
    const [name, k, n, h, w, s, T] = line.split(' ').map((v, i) => (i ? Number(v) : v));
    const lead = T ? [n, T, 3] : [n, 3];    // a video network: [N, T, 3, H, W]
    try {
      if (!sessions[name])
        sessions[name] = await ort.InferenceSession.create(path.join(dir, name + '.onnx'));
      const lq = new ort.Tensor('float32', readF32(path.join(dir, `${name}.in${k}.f32`)),
                                [...lead, h, w]);
      const res = await sessions[name].run({ lq });
      const out = res.out, want = readF32(path.join(dir, `${name}.out${k}.f32`));
      const dims = out.dims.join('x'), wantDims = [...lead, h * s, w * s].join('x');
      let max = 0;
      for (let i = 0; i < want.length && dims === wantDims; i++)
        max = Math.max(max, Math.abs(out.data[i] - want[i]) || (out.data[i] === want[i] ? 0 : Infinity));
      let ok = dims === wantDims && max <= TOL, pngNote = '';
      const pngFile = path.join(dir, `${name}.png${k}.u8`);
      if (fs.existsSync(pngFile)) {
        const p = comparePng(out.data, fs.readFileSync(pngFile));
        ok = ok && p.max <= PNG_TOL;
        pngNote = `; rounded against pixflow upscale's PNG: max ${p.max} grey level(s), ` +
                  `${p.differ} byte(s) differ`;
      }
      if (!ok) bad++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${name} ${[...lead, h, w].join('x')} -> ${dims} ` +
                  `(want ${wantDims}) max |onnxruntime - pixflow| ${max.toExponential(2)}` +
                  pngNote);
    } catch (e) {
      bad++;
      console.log(`FAIL ${name} input ${k}: ${e.message}`);
    }
  }
  console.log(`onnx_runtime: ${lines.length - bad} of ${lines.length} runs within ${TOL}`);
  process.exit(bad ? 1 : 0);
}
main();
