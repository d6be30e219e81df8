import { PrismaClient } from "@prisma/client";
import { DataSource } from "typeorm";
import * as crypto from "crypto";

const prisma = new PrismaClient();

export async function findUser(ds: DataSource, email: string) {
  return ds.query(`SELECT * FROM "user" WHERE email = '${email}'`); // ward:expect sql-injection
}

export async function findOrders(status: string) {
  return prisma.$queryRawUnsafe(
    "SELECT * FROM orders WHERE status = '" + status + "'", // ward:expect sql-injection
  );
}

export async function findOrdersSafe(status: string) {
  return prisma.$queryRaw`SELECT * FROM orders WHERE status = ${status}`;
}

export async function findUserSafe(ds: DataSource, email: string) {
  return ds.query(`SELECT * FROM "user" WHERE email = $1`, [email]);
}

export function legacyHash(user: { password: string }): string {
  return crypto
    .createHash("sha1") // ward:expect weak-hash
    .update(user.password)
    .digest("hex");
}
