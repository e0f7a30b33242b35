// QR codes drawn as SVG from the vendored encoder (qrcode-generator, pinned in package.json),
// built with DOM calls (the page's Content-Security-Policy allows no inline markup or data URLs).
import qrcode from '../vendor/qrcode-generator/qrcode.mjs';

const SVG = 'http://www.w3.org/2000/svg';

// The dark modules of text's QR code (error correction M), as rows of booleans.
export function qrMatrix(text) {
  const qr = qrcode(0, 'M');
  qr.addData(text, 'Byte');
  qr.make();
  const n = qr.getModuleCount();
  return Array.from({ length: n }, (_, r) => Array.from({ length: n }, (_, c) => qr.isDark(r, c)));
}

// An <svg> of text's QR code, black on white with the standard four-module quiet zone, that
// scales to its box; data-text keeps what it encodes for tests and for copying.
export function qrSvg(text, label) {
  const m = qrMatrix(text);
  const size = m.length + 8;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  svg.setAttribute('class', 'qr');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.dataset.text = text;
  const bg = document.createElementNS(SVG, 'rect');
  bg.setAttribute('width', size);
  bg.setAttribute('height', size);
  bg.setAttribute('fill', '#fff');
  svg.append(bg);
  // One path for every dark module: a square per module, 1 unit wide.
  let d = '';
  m.forEach((row, r) => row.forEach((dark, c) => { if (dark) d += `M${c + 4} ${r + 4}h1v1h-1z`; }));
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000');
  svg.append(path);
  return svg;
}

// What the Android app reads to sign in: this server's address and the token.
export function signInCode(server, token) {
  return `rps://sign-in?server=${encodeURIComponent(server)}&token=${encodeURIComponent(token)}`;
}
