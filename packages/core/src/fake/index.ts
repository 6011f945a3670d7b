export { EmulatorPageBrowser } from "../page-browser/emulator-page-browser.js";
export { FakePageBrowser } from "../page-browser/fake-page-browser.js";
export { pageBrowserFromEnv } from "../page-browser/page-browser-from-env.js";
export { createFakeProvider, FAKE_DEFAULT_CAPABILITIES, type FakeProviderOptions } from "./fake-provider.js";
export { encodePng } from "./png.js";
