export function pad(s, n) {
  return String(s).padStart(n);
}

export function trim(s) {
  return String(s).trim();
}
