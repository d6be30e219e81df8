import { createContext, useState } from "react";

export const AuthContext = createContext({ token: null as string | null });

export function AuthProvider({ children }: { children: React.ReactNode }) {
  const [token, setToken] = useState<string | null>(localStorage.getItem("token"));
  const login = async (email: string, password: string) => {
    const res = await fetch("/api/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    const { accessToken } = await res.json();
    localStorage.setItem("token", accessToken);
    setToken(accessToken);
  };
  const input = document.createElement("input");
  input.setAttribute("type", "password");
  return <AuthContext.Provider value={{ token }}>{children}</AuthContext.Provider>;
}
