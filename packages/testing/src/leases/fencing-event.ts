/**
 * One entry of a fencing history, as `runLeaseContention` records it (or a
 * multi-process harness does, one log per worker). Times are by the
 * store's clock; `act.at` is read just before the action was attempted.
 * Orders are the guarded resource's own (the revision an action made), so
 * "acted after a newer grant" is decided without any clock.
 */
export type FencingEvent =
  | {
      readonly type: "grant";
      readonly key: string;
      readonly holder: string;
      readonly token: number;
      /** When the token was first granted. */
      readonly at: number;
      readonly expiresAt: number;
      /**
       * The resource's order read after the grant returned (its committed
       * revision then): every accepted action ordered above it committed
       * after this grant. Read once the grant is known committed, never
       * before, so the bound can only be late, never early.
       */
      readonly seenOrder: number;
    }
  | {
      readonly type: "renew";
      readonly key: string;
      readonly holder: string;
      readonly token: number;
      readonly expiresAt: number;
    }
  | {
      readonly type: "act";
      readonly key: string;
      readonly holder: string;
      readonly token: number;
      readonly at: number;
      /** Whether the guarded resource applied the action. */
      readonly accepted: boolean;
      /** For an accepted action: its position in the resource's own order (the revision it made). */
      readonly order?: number;
    };
