import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule);
  // SIGTERM/SIGINT: @nestjs/schedule's timers stop, oncely's scheduler drains, its store closes.
  app.enableShutdownHooks();
}

void bootstrap();
