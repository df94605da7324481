import postgres from 'postgres';
import { claimBenchmark } from '/work/main/bench/claims.ts';

const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => undefined });
await admin.unsafe('drop database if exists ecpds_claimbench with (force)');
await admin.unsafe('create database ecpds_claimbench');
const figures = await claimBenchmark('postgres://postgres@127.0.0.1:5432/ecpds_claimbench');
console.log(JSON.stringify(figures, null, 1));
await admin.end();
