/**
 * The one TCP port inside a computer on which its screen gateway serves
 * every desktop (`/screens/<id>` websockets). Providers publish or route
 * it; the in-computer gateway listens on it.
 */
export const SCREEN_GATEWAY_PORT = 6080;
