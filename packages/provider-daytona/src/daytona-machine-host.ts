import type { ParsedDaytonaOptions } from "./daytona-provider-options.js";

/** What a Daytona machine needs from its provider. */
export interface DaytonaMachineHost {
  readonly options: ParsedDaytonaOptions;
  /** The API key and every preview token handed out: kept out of messages and logs. */
  readonly secrets: Set<string>;
  /** Where imports stage and check archives on this host. */
  readonly stagingRoot: string;
}
