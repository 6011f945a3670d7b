// What every provider repeats, written once (docs/architecture.md §9):
// a home that is a folder of this host, and the helpers
// below for op contexts, home paths, files over a home and exec requests.
export { LocalHome } from "./local-home.js";
