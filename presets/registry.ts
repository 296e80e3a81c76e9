/**
 * The built-in presets by name, as enabled with `hooks.presets`, and how the
 * deployment's settings adjust them.
 */
import type { HooksConfig } from '../schemas/config.ts';
import type { Mapping } from '../schemas/mapping.ts';
import { gmailPreset } from './gmail.ts';

/** Presets by the name used in `hooks.presets`. */
export const PRESETS: Readonly<Record<string, (hooks: HooksConfig) => Mapping>> = Object.freeze({
  gmail: (hooks) => {
    const { allowUnsafeExternalContent, model, thinking } = hooks.gmail;
    return {
      ...gmailPreset,
      ...(allowUnsafeExternalContent !== undefined && { allowUnsafeExternalContent }),
      ...(model !== undefined && { model }),
      ...(thinking !== undefined && { thinking }),
    };
  },
});

/** Names of the built-in presets. */
export const PRESET_NAMES = Object.freeze(Object.keys(PRESETS));
