// A page browser without a real browser: happy-dom behind the same page
// session the in-computer browser uses, for the fake provider and for tests.
// Needs happy-dom installed (an optional peer dependency of this package).
export { EmulatorPageBrowser } from "./emulator-page-browser.js";
export { FakePageBrowser } from "./fake-page-browser.js";
export { pageBrowserFromEnv } from "./page-browser-from-env.js";
