-- Argo CD health of a Kumo object (every kind of kumo.dev and infrastructure.kumo.dev:
-- they all carry the same engine-written conditions). `kumo argocd-cm` installs it for each kind; tested by
-- tests/argocd (gopher-lua, Argo CD's interpreter) on bodies captured from the lab.
--
--   Suspended    paused: annotation kumo.dev/paused "true", or condition Paused=True
--   Progressing  being deleted; status.observedGeneration behind metadata.generation
--                (Kumo has not seen the spec yet); Reconciling=True
--   Degraded     Stalled=True: only the user can fix it (reason and message say what)
--   Healthy      Ready=True
--   Progressing  otherwise (no status yet, Ready=False while Kumo retries)
local hs = {}
local status = obj.status or {}
local meta = obj.metadata or {}

local function condition(kind)
  for _, c in ipairs(status.conditions or {}) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function says(c, fallback)
  if c == nil then
    return fallback
  end
  local text = c.reason or ""
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  if text == "" then
    return fallback
  end
  return text
end

local ready = condition("Ready")
local paused = condition("Paused")
local annotation = (meta.annotations or {})["kumo.dev/paused"]
if (paused ~= nil and paused.status == "True")
    or (annotation ~= nil and string.lower((string.gsub(annotation, "^%s*(.-)%s*$", "%1"))) == "true") then
  hs.status = "Suspended"
  hs.message = says(paused, "paused (kumo.dev/paused)")
  return hs
end

if meta.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "being deleted: " .. says(ready, "Kumo deletes its cloud resources")
  return hs
end

local generation = meta.generation
local observed = status.observedGeneration
if generation ~= nil and (observed == nil or observed < generation) then
  hs.status = "Progressing"
  hs.message = "Kumo has not seen generation " .. tostring(generation) .. " yet"
  return hs
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = says(reconciling, "Kumo is working on it")
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = says(stalled, "stalled: the spec or the cloud must change")
  return hs
end

if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = says(ready, "Ready")
  return hs
end

hs.status = "Progressing"
hs.message = says(ready, "waiting for Kumo")
return hs
