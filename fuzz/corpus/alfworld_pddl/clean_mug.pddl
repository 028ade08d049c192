(define (problem clean_mug)
 (:domain alfred)
 (:objects agent1 - agent
   MugType SpongeType - otype
   Mug_bar_1 Sponge_bar_1 - object
   Sink_bar_1_bar_SinkBasin Cabinet_bar_1 CounterTop_bar_1 - receptacle
   loc_bar_0 loc_bar_1 loc_bar_2 loc_bar_3 - location)
 (:init (atLocation agent1 loc_bar_0)
   (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType) (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_1)
   (receptacleType Cabinet_bar_1 CabinetType) (receptacleAtLocation Cabinet_bar_1 loc_bar_2) (openable Cabinet_bar_1)
   (receptacleType CounterTop_bar_1 CounterTopType) (receptacleAtLocation CounterTop_bar_1 loc_bar_3)
   (objectType Mug_bar_1 MugType) (inReceptacle Mug_bar_1 CounterTop_bar_1) (pickupable Mug_bar_1) (cleanable Mug_bar_1)
   (objectType Sponge_bar_1 SpongeType) (inReceptacle Sponge_bar_1 Cabinet_bar_1) (pickupable Sponge_bar_1)
   (canContain CabinetType MugType) (canContain CounterTopType MugType) (canContain SinkBasinType MugType))
 (:goal (and (exists (?r - receptacle) (exists (?o - object)
   (and (cleanable ?o) (isClean ?o) (inReceptacle ?o ?r) (objectType ?o MugType) (receptacleType ?r CabinetType)))))))
