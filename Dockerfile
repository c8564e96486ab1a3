# One image for the three services (docker-compose.yml picks the command of each).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY . .
# Dev dependencies are needed for the build (tsup, typescript); the image keeps them for simplicity.
RUN npm ci --include=dev && npm run build
EXPOSE 3000 3001 3002
CMD ["npm", "run", "start:api"]
