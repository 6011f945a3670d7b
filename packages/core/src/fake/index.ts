export { createFakeProvider, FAKE_DEFAULT_CAPABILITIES, type FakeProviderOptions } from "./fake-provider.js";
export { encodePng } from "./png.js";
