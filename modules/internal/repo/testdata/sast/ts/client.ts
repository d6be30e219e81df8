import axios from "axios";

const OPENAI_KEY = "sk-proj-@@vQmLL8ZrF8w50SR2Qugs4lIFVRdxtDyKUOtfZUTqr8aFvnKbT3BlbkFJnHFbDfj3u_ypO09RnKw1zW9-ohP46PbmT1TOkzfR1wKbPXTX"; // ward:expect hardcoded-secret
const apiBase = process.env.API_BASE ?? "https://api.internal";

export const http = axios.create({
  baseURL: apiBase,
  headers: { Authorization: `Bearer ${process.env.API_TOKEN}` },
});

export const admin = axios.create({
  headers: { Authorization: "Bearer iECB7lavfWXTKTiVQ47qsxG72VnY6wGD4tylc-Y3" }, // ward:expect hardcoded-secret
});

export function auth(token: string) {
  return { headers: { Authorization: `Bearer ${token}` } };
}

export const openai = { apiKey: OPENAI_KEY };
