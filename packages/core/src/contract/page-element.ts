/** One interactive element of a page snapshot. */
export interface PageElement {
  /** `e1`, `e2`, ...: valid only while its snapshot is the latest one. */
  readonly ref: string;
  /** ARIA role, explicit or implied by the tag (`button`, `link`, `textbox`, `checkbox`, `frame`...). */
  readonly role: string;
  /** The accessible name a person would read: label, aria-label, text, placeholder or title. */
  readonly name: string;
  /** The current value of a field or select; a password's value is always masked. */
  readonly value?: string;
  /** The options of a select, by label, so a model can pick one without guessing. */
  readonly options?: readonly string[];
  readonly checked?: boolean;
  readonly disabled?: boolean;
  readonly expanded?: boolean;
  /** A toggle button that is on (`aria-pressed="true"`); absent when off or not a toggle. */
  readonly pressed?: boolean;
  /** The chosen tab, option, row or cell (`aria-selected="true"`); absent otherwise. */
  readonly selected?: boolean;
  readonly focused?: boolean;
  /** Where it is in the viewport in CSS pixels, so a model can fall back to desktop tools. */
  readonly bbox: { readonly x: number; readonly y: number; readonly width: number; readonly height: number };
  /** Whether it lies in the current viewport (elements are listed in document order). */
  readonly inViewport: boolean;
  /**
   * Set when the page tools cannot operate it: a frame (its content is
   * another document) or a shadow-DOM host. Use the desktop tools on its bbox.
   */
  readonly unreachable?: "frame" | "shadow-dom";
}
