import { useState } from "react";

export function LoginForm() {
  const [password, setPassword] = useState("");
  const labels = { password: "Password", passwordHint: "At least 12 characters", token: "Access token" };
  return (
    <form>
      <label htmlFor="password">{labels.password}</label>
      <input id="password" type="password" name="password" autoComplete="current-password"
        placeholder="Enter your password" value={password} onChange={(e) => setPassword(e.target.value)} />
      <p className="hint">Your password must be at least 12 characters.</p>
      <a href="/forgot-password">Forgot password?</a>
    </form>
  );
}
