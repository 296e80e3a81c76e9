/**
 * Modules set aside for stopping their transform process while it loaded them. A process
 * announces each module before loading it (at start and in a rebuild); one that dies or is
 * killed before its next message leaves that module the suspect. A module suspected twice is
 * set aside until the configuration is reloaded: processes start without it and its calls fail
 * at once, where a module that crashes or hangs every load (a bomb armed after boot) had every
 * new process die loading it, and every mapping's transform fail with it.
 */

/** Loads a module may be the suspect of before it is set aside. */
export const LOAD_KILLS_BEFORE_ASIDE = 2;

export type LoadSuspects = {
  /** A process that was loading `key` is gone: true when that sets the module aside now. */
  died(key: string): boolean;
  isAside(key: string): boolean;
};

export function createLoadSuspects(): LoadSuspects {
  const kills = new Map<string, number>();
  const aside = new Set<string>();
  return {
    died(key) {
      if (aside.has(key)) return false;
      const count = (kills.get(key) ?? 0) + 1;
      kills.set(key, count);
      if (count < LOAD_KILLS_BEFORE_ASIDE) return false;
      aside.add(key);
      return true;
    },
    isAside: (key) => aside.has(key),
  };
}
