// The lease and fencing engine (DESIGN §6) lands here; see its README section.
export {};
