/**
 * Browser JavaScript shared by the viewer and terminal pages (inlined into
 * each page's one script). A browser cuts its requests when the host's
 * network changes (Chromium's `net::ERR_NETWORK_CHANGED`, whenever Docker
 * starts or stops a container on the same machine), and one cut script or
 * module leaves the page without noVNC or xterm. A fresh document fetches
 * them again: up to `MAX_RELOADS` reloads per frame, counted in the tab's
 * session storage under `key`, before the page reports "failed".
 * `reloadToLoad(key)` says whether it reloads; `loadedOnce(key)` clears the
 * count once the page has what it needs.
 */
export const RELOAD_ON_CUT_LOAD = `
const MAX_RELOADS = 3;
function reloadsDone(key) {
  try {
    return Number(window.sessionStorage.getItem(key)) || 0;
  } catch {
    return MAX_RELOADS;
  }
}
function loadedOnce(key) {
  try {
    window.sessionStorage.removeItem(key);
  } catch {}
}
function reloadToLoad(key) {
  const done = reloadsDone(key);
  if (done >= MAX_RELOADS) {
    loadedOnce(key);
    return false;
  }
  try {
    window.sessionStorage.setItem(key, String(done + 1));
  } catch {
    return false;
  }
  setTimeout(() => location.reload(), 250 * (done + 1));
  return true;
}
`;
