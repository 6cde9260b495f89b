package boot

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// settingName and secretName are what effect.Spec's Settings and Secrets
// may be called: a variable's name, and a segment of an SSM path.
var (
	settingName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	secretName  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// EffectSecretVariable is the local-only variable that gives the effects'
// secret name directly, outside Lambda: EFFECT_SECRET_ and the name in
// upper case, "-" as "_" (billing-api-token: EFFECT_SECRET_BILLING_API_TOKEN).
func EffectSecretVariable(name string) string {
	return "EFFECT_SECRET_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Effects reads the configuration of the declared effects (effect.Spec's
// mechanism) and returns that of each effect that is on, for
// effect.Registry.Build. It reads:
//
//   - EFFECT_SETTINGS: NAME=value pairs, comma-separated (the template's
//     EffectSettings);
//   - EFFECT_SECRETS: the names of the secrets the processor may read,
//     comma-separated (EffectSecrets), and EFFECT_SECRETS_PATH, the stage's
//     path they live under (/webhook-inbox/<stage>/effects/), which the
//     template sets with them: each secret is the SecureString parameter
//     path+name, read on first need;
//   - outside Lambda, EFFECT_SECRET_<NAME> (EffectSecretVariable), a
//     secret's value itself, for the local stack.
//
// It records as problems, all at once: a setting or secret an effect that
// is on declares and that is not configured, a configured one no effect
// declares, an optional effect configured in part, a secret's variable set
// in Lambda, and a secrets path outside the stage's.
func (r *Reader) Effects(specs []effect.Spec) map[string]effect.Config {
	settings := r.effectSettings()
	granted := map[string]bool{}
	for _, n := range strings.Split(r.Optional("EFFECT_SECRETS", ""), ",") {
		if n = strings.TrimSpace(n); n != "" {
			granted[n] = true
		}
	}
	path := r.Optional("EFFECT_SECRETS_PATH", "")
	if path != "" && !strings.HasSuffix(path, "/") {
		path += "/"
	}
	if stage := strings.TrimSpace(r.env("STAGE")); stage != "" && path != "" && !strings.Contains(path, "/"+stage+"/") {
		r.Fail(fmt.Errorf("EFFECT_SECRETS_PATH=%s is not under stage %s's path (/webhook-inbox/%s/effects/)", path, stage, stage))
	}
	declaredSetting, declaredSecret := map[string]bool{}, map[string]bool{}
	out := map[string]effect.Config{}
	for _, s := range specs {
		var given, missing []string
		for _, n := range s.Settings {
			declaredSetting[n] = true
			if !settingName.MatchString(n) {
				r.Fail(fmt.Errorf("effect %s declares setting %q: want a name like BILLING_API_URL", s.Name, n))
			}
			if _, ok := settings[n]; ok {
				given = append(given, n)
			} else {
				missing = append(missing, n)
			}
		}
		for _, n := range s.Secrets {
			declaredSecret[n] = true
		}
		switch {
		case s.Optional && len(given) == 0:
			continue // off
		case len(missing) > 0:
			r.Fail(fmt.Errorf("effect %s needs the setting(s) %s in EFFECT_SETTINGS (parameter EffectSettings, like %s=...)",
				s.Name, strings.Join(missing, ", "), missing[0]))
		}
		own := map[string]string{}
		for _, n := range s.Settings {
			own[n] = settings[n]
		}
		secs := map[string]*secrets.Secret{}
		for _, n := range s.Secrets {
			if sec := r.effectSecret(s.Name, n, granted[n], path); sec != nil {
				secs[n] = sec
			}
		}
		out[s.Name] = effect.NewConfig(own, secs)
	}
	for _, n := range slices.Sorted(maps.Keys(settings)) {
		if !declaredSetting[n] {
			r.Fail(fmt.Errorf("EFFECT_SETTINGS sets %s, which no effect declares (shared/pipeline/hooks)", n))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(granted)) {
		if !declaredSecret[n] {
			r.Fail(fmt.Errorf("EFFECT_SECRETS names %s, which no effect declares (shared/pipeline/hooks)", n))
		}
	}
	return out
}

// effectSettings parses EFFECT_SETTINGS.
func (r *Reader) effectSettings() map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(r.Optional("EFFECT_SETTINGS", ""), ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !settingName.MatchString(k) || v == "" {
			// Not the value: a setting is not secret, but a token pasted
			// here by mistake must not reach a log.
			r.Fail(fmt.Errorf("EFFECT_SETTINGS: an entry is not NAME=value (names like BILLING_API_URL, comma-separated)"))
			continue
		}
		out[k] = v
	}
	return out
}

// effectSecret returns effect's secret name: the local variable's value
// outside Lambda, else the parameter under path, which granted says the
// processor may read.
func (r *Reader) effectSecret(effectName, name string, granted bool, path string) *secrets.Secret {
	if !secretName.MatchString(name) {
		r.Fail(fmt.Errorf("effect %s declares secret %q: want a name like billing-api-token", effectName, name))
		return nil
	}
	local := EffectSecretVariable(name)
	if v := strings.TrimSpace(r.env(local)); v != "" {
		if r.inLambda() {
			r.Fail(
				fmt.Errorf(
					"%s is set in the function's environment: in Lambda a secret comes only from its SSM SecureString parameter; remove the variable (and rotate the secret it exposed)",
					local,
				),
			)
			return nil
		}
		return secrets.Fixed(local, v)
	}
	if !granted || path == "" {
		r.Fail(
			fmt.Errorf(
				"effect %s reads the secret %s: name it in EFFECT_SECRETS (parameter EffectSecrets) and store it as the SecureString /webhook-inbox/<stage>/effects/%s (or set %s outside Lambda)",
				effectName,
				name,
				name,
				local,
			),
		)
		return nil
	}
	return secrets.FromParameter(r.ssm, path+name)
}
