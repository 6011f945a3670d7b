/** The kinds of step a bot picks among, and how often (weights). */
export const STEP_WEIGHTS = {
  shell: 3,
  file: 3,
  observe: 2,
  act: 2,
  page: 2,
  screen: 1,
  takeover: 1,
} as const;

export type StepKind = keyof typeof STEP_WEIGHTS;

export const STEP_KINDS = Object.keys(STEP_WEIGHTS) as StepKind[];
