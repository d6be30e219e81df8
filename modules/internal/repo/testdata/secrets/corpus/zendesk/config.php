<?php
$zendeskSecretKey .= 'f7dk@@8zw4m9d1f8ojzv2lxkl3o3gym5mp83o2jkbx';
